from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.sent import Sent
from ...models.tapback import Tapback
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    reaction: Tapback,
    *,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/api/v1/messaging/messages/{id}/reactions/{reaction}".format(
            id=quote(str(id), safe=""),
            reaction=quote(str(reaction), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Sent | None:
    if response.status_code == 200:
        response_200 = Sent.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = Sent.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Sent]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    reaction: Tapback,
    *,
    client: AuthenticatedClient,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | Sent]:
    """Take a tapback back.

     Sends the removal as a message of `kind: reaction` with `removed: true`; answered like
    `POST /messages/{id}/reactions`.

    Args:
        id (str):
        reaction (Tapback):
        idempotency_key (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Sent]
    """

    kwargs = _get_kwargs(
        id=id,
        reaction=reaction,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    reaction: Tapback,
    *,
    client: AuthenticatedClient,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | Sent | None:
    """Take a tapback back.

     Sends the removal as a message of `kind: reaction` with `removed: true`; answered like
    `POST /messages/{id}/reactions`.

    Args:
        id (str):
        reaction (Tapback):
        idempotency_key (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Sent
    """

    return sync_detailed(
        id=id,
        reaction=reaction,
        client=client,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    id: str,
    reaction: Tapback,
    *,
    client: AuthenticatedClient,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | Sent]:
    """Take a tapback back.

     Sends the removal as a message of `kind: reaction` with `removed: true`; answered like
    `POST /messages/{id}/reactions`.

    Args:
        id (str):
        reaction (Tapback):
        idempotency_key (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Sent]
    """

    kwargs = _get_kwargs(
        id=id,
        reaction=reaction,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    reaction: Tapback,
    *,
    client: AuthenticatedClient,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | Sent | None:
    """Take a tapback back.

     Sends the removal as a message of `kind: reaction` with `removed: true`; answered like
    `POST /messages/{id}/reactions`.

    Args:
        id (str):
        reaction (Tapback):
        idempotency_key (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Sent
    """

    return (
        await asyncio_detailed(
            id=id,
            reaction=reaction,
            client=client,
            idempotency_key=idempotency_key,
        )
    ).parsed
