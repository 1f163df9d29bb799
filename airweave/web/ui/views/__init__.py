"""Views of the web UI: parse, authorize (airweave.web.ui.access), call a service or selector, render."""
