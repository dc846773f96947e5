"""Every write of the domain, one module per entity.

Each service is one transaction and writes its audit event inside it, so nothing is ever
half-written and nothing happens without a trace. Services that touch an instance lock its row
first (a no-op on SQLite, where IMMEDIATE transactions already serialise writers).

Import each service from the module that defines it (`beliefs.services.instances`, …): this
package re-exports nothing, so every name has one import path.
"""
