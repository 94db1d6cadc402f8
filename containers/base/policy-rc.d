#!/bin/sh
# Daemons are started by provisioning, never by package installs.
exit 101
