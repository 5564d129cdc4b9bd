from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.group_changed import GroupChanged
from ...models.leave_group import LeaveGroup
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    body: LeaveGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/groups/{id}/leave".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | GroupChanged | None:
    if response.status_code == 200:
        response_200 = GroupChanged.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = GroupChanged.from_dict(response.json())

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
        response_502 = Error.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | GroupChanged]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LeaveGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | GroupChanged]:
    """Make the line leave a group.

     Outcomes as for a rename. Once applied the group is `left`: nothing more can be sent to it
    or changed (`409 group_left`); its messages stay readable.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (LeaveGroup): `POST /groups/{id}/leave` (the body is optional). Leaving cannot be
            undone, so a body with
            any field but `idempotency_key` is refused rather than ignored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | GroupChanged]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LeaveGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | GroupChanged | None:
    """Make the line leave a group.

     Outcomes as for a rename. Once applied the group is `left`: nothing more can be sent to it
    or changed (`409 group_left`); its messages stay readable.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (LeaveGroup): `POST /groups/{id}/leave` (the body is optional). Leaving cannot be
            undone, so a body with
            any field but `idempotency_key` is refused rather than ignored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | GroupChanged
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LeaveGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | GroupChanged]:
    """Make the line leave a group.

     Outcomes as for a rename. Once applied the group is `left`: nothing more can be sent to it
    or changed (`409 group_left`); its messages stay readable.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (LeaveGroup): `POST /groups/{id}/leave` (the body is optional). Leaving cannot be
            undone, so a body with
            any field but `idempotency_key` is refused rather than ignored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | GroupChanged]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LeaveGroup,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | GroupChanged | None:
    """Make the line leave a group.

     Outcomes as for a rename. Once applied the group is `left`: nothing more can be sent to it
    or changed (`409 group_left`); its messages stay readable.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (LeaveGroup): `POST /groups/{id}/leave` (the body is optional). Leaving cannot be
            undone, so a body with
            any field but `idempotency_key` is refused rather than ignored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | GroupChanged
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
