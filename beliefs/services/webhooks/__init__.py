"""Webhooks, in three modules: `endpoints` (a runtime's receivers: register, delete, rotate the
secret, the URL guard), `events` (an event and its deliveries, written in the transaction of the
change that causes it) and `delivery` (claiming due deliveries as lanes, signing, sending them
over the pinned transport, recording outcomes, resuming after a dead worker).

An event is written with one delivery per subscribed endpoint (the outbox: its rows are the
workers' queue), so a rolled-back change sends nothing and a committed one is delivered even if
no worker ran at the time. Delivery is at least once: a receiver drops duplicates by
`webhook-id`.
"""
