"""Experiments the labs run and the checks grade, on real (emulated) services, one module per
lesson: ``delivery`` (redelivery races and chaos, labs 01 and 02), ``autoscaling`` (bursts on
real queues and the fleet model, lab 05), ``replay`` (archives and replays, lab 06)."""
