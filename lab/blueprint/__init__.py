"""The blueprint layer: blueprints and their schema (one strict base model), hostlists.

Imports only the foundation (paths, versions)."""
