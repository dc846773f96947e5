"""The pure core: plain data in, plain data out, no Django import anywhere below here.

policy (effective risk and routing), worlddiff, contract (proposal schema and validator),
classes (classification changes), canonical (bindings digest), vocabulary (names and limits),
webhooks (event types, retries, the SSRF address guard), reveal (hidden characters, mixed
scripts).
"""
