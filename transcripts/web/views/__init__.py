"""The HTML pages, one module per screen."""
