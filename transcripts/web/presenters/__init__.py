"""What each page shows, built from models and selectors; templates only lay it out."""
