"""A person's passkey public keys, for runtimes.

A tool server that holds a receipt with passkey evidence verifies, without trusting the
console, that the person's own device signed these bindings: it needs the person's public
keys. A runtime reads them only for people it has opened at least one instance for (anyone
else is 404, whether they exist or not); people themselves see theirs on the account page.
"""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs import selectors
from beliefs.api import serializers as s
from beliefs.api.auth import IsRuntime
from beliefs.api.views import read_schema, runtime_key


class PersonPasskeysApi(APIView):
    permission_classes = [IsRuntime]

    @read_schema(s.PersonPasskeysOut, summary="A person's passkey public keys (runtimes)")
    def get(self, request: Request, username: str) -> Response:
        """The public keys (COSE_Key in base64url, and as a JWK) of the person's passkeys, removed
        ones included (with `removed_at`) so that what they signed stays verifiable. Only for a
        person the runtime has opened an instance for: anyone else is 404. Passkey names are not
        shown."""
        return Response(
            selectors.person_passkeys_for_runtime(username, runtime_key(request).runtime_id)
        )
