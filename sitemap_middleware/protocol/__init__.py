"""The sitemap protocol itself: entries and their rules, URIs, XML text, and the urlset and
index writers. Pure: no HTTP, no I/O."""
