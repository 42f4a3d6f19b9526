"""A launch's `id_token` checked as CONTRACT §8 says, with PyJWT (no hand-written JWT code).

`verify` returns the `Launch` or raises `Refused` with the sentence the
launch page shows: what was wrong, in words an LMS administrator can act on.
The state and nonce are checked by the caller (they need the browser and the
store); everything the token itself says is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jwt

from attn_practice.grader.host.lti import claims as C
from attn_practice.grader.host.lti.http import PlatformError
from attn_practice.grader.host.lti.platform_keys import KeyCache
from attn_practice.grader.host.lti.registry import Platform

#: clock skew allowed between the platform and us (CONTRACT §8: a minute)
LEEWAY = 60
MAX_TOKEN = 64 * 1024


class Refused(Exception):
    """A launch refused; `str()` is what the page says."""


@dataclass(frozen=True)
class Launch:
    platform: Platform
    sub: str
    nonce: str
    name: str
    roles: tuple[str, ...]
    deployment_id: str
    context_id: str
    context_title: str
    resource_link_id: str
    ags: dict[str, Any]
    nrps_url: str
    student_id: str = ""  # the LIS person sourcedid, the institution's student id, when the LMS sends it

    @property
    def instructor(self) -> bool:
        return C.is_instructor(list(self.roles))


def _unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        return jwt.get_unverified_header(token), jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise Refused("the launch's id_token is not a JWT the tool can read.") from None


def _platform_for(claims: dict[str, Any], registered: list[Platform]) -> Platform:
    iss = claims.get("iss")
    mine = [p for p in registered if p.issuer == iss]
    if not mine:
        raise Refused(f"the issuer {str(iss)[:200]!r} is not registered with this class (attn-practice "
                      "host lti register).")
    aud = claims.get("aud")
    auds = aud if isinstance(aud, list) else [aud]
    match = [p for p in mine if p.client_id in auds]
    if not match:
        raise Refused("the token's audience (aud) is not the client id registered for this issuer.")
    return match[0]


def verify(token: str, registered: list[Platform], keys: KeyCache) -> Launch:
    if not token or len(token) > MAX_TOKEN:
        raise Refused("the launch carries no id_token (or one too large to be real).")
    header, unverified = _unverified(token)
    if header.get("alg") != "RS256":
        raise Refused(f"the id_token is signed with {str(header.get('alg'))[:20]!r}; LTI 1.3 needs RS256.")
    platform = _platform_for(unverified, registered)
    try:
        key = keys.key(platform.jwks_url, header.get("kid"))
    except PlatformError as exc:
        raise Refused(f"the platform's public keys could not be fetched ({exc}); try the launch again.") \
            from None
    if key is None:
        raise Refused("the id_token is signed with a key the platform's key set does not hold (kid "
                      f"{str(header.get('kid'))[:60]!r}).")
    try:
        got = jwt.decode(token, key, algorithms=["RS256"], audience=platform.client_id,
                         issuer=platform.issuer, leeway=LEEWAY,
                         options={"require": ["exp", "iat", "iss", "aud"]})
    except jwt.ExpiredSignatureError:
        raise Refused("the id_token has expired (exp is past, beyond a minute's clock skew): launch "
                      "again from the course page.") from None
    except jwt.ImmatureSignatureError:
        raise Refused("the id_token is issued in the future (iat beyond a minute's clock skew): check "
                      "the clocks.") from None
    except jwt.InvalidSignatureError:
        raise Refused("the id_token's signature does not verify with the platform's key.") from None
    except jwt.InvalidAudienceError:
        raise Refused("the token's audience (aud) is not this tool's client id.") from None
    except jwt.MissingRequiredClaimError as exc:
        raise Refused(f"the id_token lacks the {exc.claim!r} claim.") from None
    except jwt.PyJWTError as exc:
        raise Refused(f"the id_token does not verify ({type(exc).__name__}).") from None
    return _claims(got, platform)


def _text(claims: dict[str, Any], key: str) -> str:
    value = claims.get(key, "")
    return value if isinstance(value, str) else ""


def _claims(got: dict[str, Any], platform: Platform) -> Launch:
    aud = got.get("aud")
    azp = got.get("azp")
    if (isinstance(aud, list) and len(aud) > 1 and azp is None) or (azp is not None and azp != platform.client_id):
        raise Refused("the token's authorized party (azp) is not this tool's client id.")
    deployment = _text(got, C.DEPLOYMENT_ID)
    if deployment not in platform.deployment_ids:
        raise Refused(f"the deployment {deployment[:100]!r} is not registered for this platform (add it "
                      "with attn-practice host lti register ... --deployment-id).")
    if got.get(C.MESSAGE_TYPE) != C.RESOURCE_LINK_REQUEST:
        raise Refused(f"this tool takes {C.RESOURCE_LINK_REQUEST} launches, not "
                      f"{str(got.get(C.MESSAGE_TYPE))[:60]!r}.")
    if got.get(C.VERSION) != C.LTI_VERSION:
        raise Refused(f"this tool speaks LTI {C.LTI_VERSION}, the launch says {str(got.get(C.VERSION))[:20]!r}.")
    sub = _text(got, "sub")
    if not sub:
        raise Refused("the launch names no user (no sub): an anonymous launch cannot keep anyone's work.")
    nonce = _text(got, "nonce")
    if not nonce:
        raise Refused("the id_token carries no nonce.")
    roles = got.get(C.ROLES, [])
    context = got.get(C.CONTEXT) if isinstance(got.get(C.CONTEXT), dict) else {}
    link = got.get(C.RESOURCE_LINK) if isinstance(got.get(C.RESOURCE_LINK), dict) else {}
    ags = got.get(C.AGS) if isinstance(got.get(C.AGS), dict) else {}
    nrps = got.get(C.NRPS) if isinstance(got.get(C.NRPS), dict) else {}
    name = _text(got, "name") or " ".join(x for x in (_text(got, "given_name"), _text(got, "family_name")) if x)
    name = "".join(c for c in name if c.isprintable())
    return Launch(platform=platform, sub=sub[:255], nonce=nonce, name=name.strip()[:80] or "LMS learner",
                  roles=tuple(r for r in roles if isinstance(r, str)) if isinstance(roles, list) else (),
                  deployment_id=deployment, context_id=str(context.get("id", ""))[:255],
                  context_title=str(context.get("title", "") or context.get("label", ""))[:200],
                  resource_link_id=str(link.get("id", ""))[:255], ags=ags,
                  nrps_url=str(nrps.get("context_memberships_url", "")), student_id=_sourcedid(got))


def _sourcedid(got: dict[str, Any]) -> str:
    lis = got.get(C.LIS)
    value = lis.get("person_sourcedid") if isinstance(lis, dict) else None
    return "".join(c for c in value if c.isprintable()).strip()[:64] if isinstance(value, str) else ""
