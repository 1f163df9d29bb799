"""Change notifications: a vendor tells us something changed, and an incremental sync runs.

`base` holds the handler contract and the request/reply shapes, `signing` the HMAC helpers
every handler verifies with, `vendors` one handler per vendor, `services` the receiving
service (token check, handshake, signature, debounce) called by the API face. See
docs/notifications.md.
"""
