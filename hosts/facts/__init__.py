"""What each host is given and how it speaks: caps, limits, dialects, the rendered
text, the Codex releases we test and Codex's app-server client. The bottom room."""
