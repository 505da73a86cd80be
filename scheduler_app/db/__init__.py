"""Database connections and cursors shared by the beat, the worker and their hooks: the
``close_old_connections`` that skips the health check of a connection used a moment ago
(``connections``), and the server-binding cursor for statements run over and over
(``cursors``)."""
