"""SQS: what every consumer shares (``messages``), the long-polling worker (``worker``) and its
attempt budget (``lastattempt``), Lambda's event source mapping (``esm``), dead-letter queues
(``dlq``) and moving their records back to work (``redrive``)."""
