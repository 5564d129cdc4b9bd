from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.line import Line
from ...models.line_update import LineUpdate
from ...types import Response


def _get_kwargs(
    id: str,
    *,
    body: LineUpdate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/api/v1/messaging/lines/{id}".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Line | None:
    if response.status_code == 200:
        response_200 = Line.from_dict(response.json())

        return response_200

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

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Line]:
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
    body: LineUpdate,
) -> Response[Error | Line]:
    """Change a line's sending policy.

     Each field of `policy` given as a whole number sets that limit, `null` removes it, and a field
    left out keeps its value; the line's view shows the policy in force (the kind's defaults
    filled in). A send over the budget is still accepted: it waits for the line.

    Args:
        id (str):
        body (LineUpdate): `PATCH /lines/{id}`: the limits to change (a number sets, `null`
            removes, a field left out
            keeps its value). Example: {'policy': {'max_new_contacts_per_month': None, 'max_per_day':
            500, 'min_gap_ms': 3000}}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Line]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LineUpdate,
) -> Error | Line | None:
    """Change a line's sending policy.

     Each field of `policy` given as a whole number sets that limit, `null` removes it, and a field
    left out keeps its value; the line's view shows the policy in force (the kind's defaults
    filled in). A send over the budget is still accepted: it waits for the line.

    Args:
        id (str):
        body (LineUpdate): `PATCH /lines/{id}`: the limits to change (a number sets, `null`
            removes, a field left out
            keeps its value). Example: {'policy': {'max_new_contacts_per_month': None, 'max_per_day':
            500, 'min_gap_ms': 3000}}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Line
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LineUpdate,
) -> Response[Error | Line]:
    """Change a line's sending policy.

     Each field of `policy` given as a whole number sets that limit, `null` removes it, and a field
    left out keeps its value; the line's view shows the policy in force (the kind's defaults
    filled in). A send over the budget is still accepted: it waits for the line.

    Args:
        id (str):
        body (LineUpdate): `PATCH /lines/{id}`: the limits to change (a number sets, `null`
            removes, a field left out
            keeps its value). Example: {'policy': {'max_new_contacts_per_month': None, 'max_per_day':
            500, 'min_gap_ms': 3000}}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Line]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    body: LineUpdate,
) -> Error | Line | None:
    """Change a line's sending policy.

     Each field of `policy` given as a whole number sets that limit, `null` removes it, and a field
    left out keeps its value; the line's view shows the policy in force (the kind's defaults
    filled in). A send over the budget is still accepted: it waits for the line.

    Args:
        id (str):
        body (LineUpdate): `PATCH /lines/{id}`: the limits to change (a number sets, `null`
            removes, a field left out
            keeps its value). Example: {'policy': {'max_new_contacts_per_month': None, 'max_per_day':
            500, 'min_gap_ms': 3000}}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Line
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
