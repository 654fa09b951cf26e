"""How fast the board really is, and what the daemon does about it: measured synthesis speed,
degrading to a faster voice variant, and keepalive inference while idle."""
