"""`attn-practice host lti register|list|config|rotate-key`: a hosted class as an LTI 1.3 tool.

Registered on the `host` group. Each works on the class's data folder (or
its `--db`), also while the class runs: the running class reads the
registrations from its database at every launch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from attn_practice.grader.commands.common import EXIT_PASSED, Problem, say

DB_HELP = "postgresql://... when the class uses one."


@contextmanager
def _store(data_dir: Path, db: str | None, *, create: bool = False) -> Iterator[Any]:
    from attn_practice.grader.host import class_home
    from attn_practice.grader.host.server import open_data
    from attn_practice.grader.host.store.base import StoreUnavailable

    try:
        place = class_home.where(data_dir, db, must_exist=not create)
    except class_home.NoClass as exc:
        raise Problem(str(exc)) from None
    try:
        store = open_data(data_dir, place.url)
    except (StoreUnavailable, ValueError) as exc:
        raise Problem(str(exc) + class_home.unreachable_hint(place)) from None
    if create:
        class_home.record(data_dir, db)
    try:
        yield store
    except StoreUnavailable as exc:
        raise Problem(str(exc)) from None
    finally:
        store.close()


@click.group("lti", context_settings={"help_option_names": ["-h", "--help"]})
def lti() -> None:
    """Make the class an LTI 1.3 tool of an LMS (Canvas, Moodle, Blackboard, Brightspace, Sakai).

    \b
      attn-practice host lti register DATA_DIR --issuer URL --client-id ID --auth-url URL \\
          --token-url URL --jwks-url URL --deployment-id ID [--token-audience URL]
      attn-practice host lti list DATA_DIR
      attn-practice host lti config DATA_DIR --url https://class.example.org
      attn-practice host lti rotate-key DATA_DIR [--retire]

    docs/lti.md walks through Canvas's developer key and Moodle's external tool.
    """


@lti.command("register")
@click.argument("data_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--issuer", required=True, help="The platform's issuer (iss), e.g. https://canvas.instructure.com.")
@click.option("--client-id", required=True, help="The client id the LMS gave this tool.")
@click.option("--auth-url", required=True, help="The platform's OIDC authorization URL.")
@click.option("--token-url", required=True, help="The platform's OAuth 2 token URL.")
@click.option("--jwks-url", required=True, help="The platform's public key set URL.")
@click.option("--deployment-id", "deployments", multiple=True,
              help="A deployment id (repeat for several; registering again adds more).")
@click.option("--token-audience", default="", help="The token audience when it is not the token URL "
              "(Brightspace).")
@click.option("--db", default=None, metavar="URL", help=DB_HELP)
def register_cmd(data_dir: Path, issuer: str, client_id: str, auth_url: str, token_url: str, jwks_url: str,
                 deployments: tuple[str, ...], token_audience: str, db: str | None) -> int:
    """Register a platform (or add deployment ids to one); takes effect at once, also while hosting."""
    from attn_practice.grader.host.lti import registry

    with _store(data_dir, db, create=True) as store:
        try:
            platform, new = registry.register(store, issuer=issuer, client_id=client_id, auth_url=auth_url,
                                              token_url=token_url, jwks_url=jwks_url,
                                              deployment_ids=list(deployments),
                                              token_audience=token_audience)
        except registry.RegistryError as exc:
            raise Problem(str(exc)) from None
        registry.tool_keys(store)  # the tool's key exists from now on (config prints it)
    say(f"{'Registered' if new else 'Updated'} {platform.issuer} (client id {platform.client_id}); "
        f"deployments: {', '.join(platform.deployment_ids)}.")
    return EXIT_PASSED


@lti.command("list")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--db", default=None, metavar="URL", help=DB_HELP)
def list_cmd(data_dir: Path, as_json: bool, db: str | None) -> int:
    """The registered platforms."""
    from attn_practice.grader.host.lti import registry

    with _store(data_dir, db) as store:
        found = registry.platforms(store)
    if as_json:
        click.echo(json.dumps([p.to_json() for p in found], indent=2))
        return EXIT_PASSED
    if not found:
        say("No platform registered: attn-practice host lti register DATA_DIR --issuer ... (see --help).")
    for p in found:
        click.echo(f"{p.issuer}  client id {p.client_id}\n  deployments: {', '.join(p.deployment_ids)}\n"
                   f"  auth {p.auth_url}\n  token {p.token_url}"
                   + (f" (audience {p.token_audience})" if p.token_audience else "")
                   + f"\n  keys {p.jwks_url}")
    return EXIT_PASSED


@lti.command("config")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--url", "base", required=True, help="The class's public base URL, as learners reach it.")
@click.option("--db", default=None, metavar="URL", help=DB_HELP)
def config_cmd(data_dir: Path, base: str, db: str | None) -> int:
    """Print the JSON an LMS administrator pastes in: the tool's URLs and its public key set."""
    from attn_practice.grader.host.lti import registry

    base = base.rstrip("/")
    if not registry.url_ok(base):
        raise Problem(f"--url {base!r} must be https:// (http:// only on a loopback address).")
    with _store(data_dir, db) as store:
        store.set_setting(registry.BASE_URL, base)
        keys = registry.public_jwks(store)
    click.echo(json.dumps({
        "title": "attn-practice", "description": "Practice the attention mechanism, checked as you go.",
        "oidc_initiation_url": f"{base}/lti/login", "target_link_uri": f"{base}/lti/launch",
        "redirect_uris": [f"{base}/lti/launch"], "public_jwk_url": f"{base}/lti/jwks",
        "public_jwk": keys["keys"][0], "jwks": keys,
        "scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                   "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
                   "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                   "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"],
        "claims": ["iss", "sub", "name", "given_name", "family_name"],
    }, indent=2))
    return EXIT_PASSED


@lti.command("rotate-key")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--retire", is_flag=True, help="Only drop the previous key from the key set (when every "
              "platform has moved to the current one); no new key.")
@click.option("--db", default=None, metavar="URL", help=DB_HELP)
def rotate_cmd(data_dir: Path, retire: bool, db: str | None) -> int:
    """A new tool key; the previous one stays in the key set until the next rotation (or --retire)."""
    from attn_practice.grader.host.lti import registry

    with _store(data_dir, db) as store:
        if retire:
            dropped = registry.retire_previous(store)
            say(f"Dropped {', '.join(dropped)} from the key set." if dropped else
                "There was no previous key to drop; the key set holds the current key only.")
            return EXIT_PASSED
        key = registry.rotate(store)
        kids = [k.kid for k in registry.tool_keys(store)]
    say(f"New tool key {key.kid}; the key set at /lti/jwks now holds {', '.join(kids)}. Platforms that "
        "fetch the key set by URL pick it up by themselves; one given the key by hand needs it again "
        "(host lti config).")
    return EXIT_PASSED
