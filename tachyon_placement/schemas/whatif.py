"""JSON schema of Tachyon's POST /tachyon/sessions (API version 1.0)."""

POST = {
    'type': 'object',
    'properties': {
        # Seconds; at most [whatif] max_ttl (checked by the handler).
        'ttl': {'type': 'integer', 'minimum': 1, 'maximum': 86400},
    },
    'additionalProperties': False,
}
