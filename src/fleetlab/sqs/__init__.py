"""SQS: the long-polling worker (``worker``), Lambda's event source mapping (``esm``),
and dead-letter queues (``dlq``)."""
