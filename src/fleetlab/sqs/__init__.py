"""SQS: what every consumer shares (``messages``), the long-polling worker (``worker``),
Lambda's event source mapping (``esm``), and dead-letter queues (``dlq``)."""
