"""One site's answers that are not documents: robots.txt and the HTML overview."""
