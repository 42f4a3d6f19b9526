"""The names LTI 1.3 fixes: claim URIs, roles, scopes, media types (CONTRACT §8)."""

from __future__ import annotations

import enum

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = LTI + "message_type"
VERSION = LTI + "version"
DEPLOYMENT_ID = LTI + "deployment_id"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
RESOURCE_LINK = LTI + "resource_link"
TARGET_LINK_URI = LTI + "target_link_uri"
LIS = LTI + "lis"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"

RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
LTI_VERSION = "1.3.0"


class Scope(str, enum.Enum):
    SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
    LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
    LINEITEM_READ = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
    MEMBERSHIPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


class Media(str, enum.Enum):
    SCORE = "application/vnd.ims.lis.v1.score+json"
    LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
    LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
    MEMBERSHIPS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"


#: roles that open the instructor page (full URIs: LTI 1.3 roles are never short names here)
INSTRUCTOR_ROLES = frozenset({
    "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
    "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
    "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator",
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
})
LEARNER_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def is_instructor(roles: object) -> bool:
    return isinstance(roles, list) and any(r in INSTRUCTOR_ROLES for r in roles if isinstance(r, str))
