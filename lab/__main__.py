from lab.cli import app

app(prog_name="lab")
