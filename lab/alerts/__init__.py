"""`lab alerts`: what a lab's alerting rules have firing now (Prometheus) and what Alertmanager
delivered (the alert receiver's JSON lines under .lab/<lab>/alerts/), newest first."""
