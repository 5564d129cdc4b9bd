from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.create_group import CreateGroup
from ...models.error import Error
from ...models.group_created import GroupCreated
from ...models.group_refused import GroupRefused
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: CreateGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/groups",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | GroupCreated | GroupRefused | None:
    if response.status_code == 200:
        response_200 = GroupCreated.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = GroupCreated.from_dict(response.json())

        return response_201

    if response.status_code == 202:
        response_202 = GroupCreated.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 502:
        response_502 = GroupRefused.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = GroupRefused.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | GroupCreated | GroupRefused]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: CreateGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | GroupCreated | GroupRefused]:
    """Create an iMessage group with its opening message.

     msgline asks the line to create the group and waits for its answer. Never falls back to SMS or
    to separate messages. After a `202` (no answer in time), poll `GET /groups/{id}`; do not retry
    with a new idempotency key.

    Args:
        idempotency_key (None | str | Unset):
        body (CreateGroup): `POST /groups`. Example: {'body': 'Hi all', 'name': 'Weekend trip',
            'participants': ['+12015550123', '+12015550124']}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | GroupCreated | GroupRefused]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: CreateGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | GroupCreated | GroupRefused | None:
    """Create an iMessage group with its opening message.

     msgline asks the line to create the group and waits for its answer. Never falls back to SMS or
    to separate messages. After a `202` (no answer in time), poll `GET /groups/{id}`; do not retry
    with a new idempotency key.

    Args:
        idempotency_key (None | str | Unset):
        body (CreateGroup): `POST /groups`. Example: {'body': 'Hi all', 'name': 'Weekend trip',
            'participants': ['+12015550123', '+12015550124']}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | GroupCreated | GroupRefused
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: CreateGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | GroupCreated | GroupRefused]:
    """Create an iMessage group with its opening message.

     msgline asks the line to create the group and waits for its answer. Never falls back to SMS or
    to separate messages. After a `202` (no answer in time), poll `GET /groups/{id}`; do not retry
    with a new idempotency key.

    Args:
        idempotency_key (None | str | Unset):
        body (CreateGroup): `POST /groups`. Example: {'body': 'Hi all', 'name': 'Weekend trip',
            'participants': ['+12015550123', '+12015550124']}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | GroupCreated | GroupRefused]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: CreateGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | GroupCreated | GroupRefused | None:
    """Create an iMessage group with its opening message.

     msgline asks the line to create the group and waits for its answer. Never falls back to SMS or
    to separate messages. After a `202` (no answer in time), poll `GET /groups/{id}`; do not retry
    with a new idempotency key.

    Args:
        idempotency_key (None | str | Unset):
        body (CreateGroup): `POST /groups`. Example: {'body': 'Hi all', 'name': 'Weekend trip',
            'participants': ['+12015550123', '+12015550124']}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | GroupCreated | GroupRefused
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
