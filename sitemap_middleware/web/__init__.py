"""HTTP, sans I/O: which of our paths a request names, the header and conditional-request rules,
the reply vocabulary, robots.txt merging, the site a request is for, and gzip for bodies."""
