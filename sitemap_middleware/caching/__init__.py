"""Caching: where rendered documents are kept (`stores`), which key and validators a document
has (`resources`), and answers replayed while the stored document still stands (`replays`)."""
