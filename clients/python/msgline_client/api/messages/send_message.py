from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.send_message import SendMessage
from ...models.sent import Sent
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: SendMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/messages",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Sent]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: SendMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | Sent]:
    """Send a text.

     `202` when accepted for delivery; `200` with `duplicate: true` and `Idempotent-Replayed: true`
    when the same `Idempotency-Key` and request were seen before (nothing is sent again).

    Args:
        idempotency_key (None | str | Unset):
        body (SendMessage): `POST /messages`: read once at the edge, handed to [`send_text`] as it
            is. Example: {'body': 'Your order has shipped', 'to': '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Sent]
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
    body: SendMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | Sent | None:
    """Send a text.

     `202` when accepted for delivery; `200` with `duplicate: true` and `Idempotent-Replayed: true`
    when the same `Idempotency-Key` and request were seen before (nothing is sent again).

    Args:
        idempotency_key (None | str | Unset):
        body (SendMessage): `POST /messages`: read once at the edge, handed to [`send_text`] as it
            is. Example: {'body': 'Your order has shipped', 'to': '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Sent
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: SendMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | Sent]:
    """Send a text.

     `202` when accepted for delivery; `200` with `duplicate: true` and `Idempotent-Replayed: true`
    when the same `Idempotency-Key` and request were seen before (nothing is sent again).

    Args:
        idempotency_key (None | str | Unset):
        body (SendMessage): `POST /messages`: read once at the edge, handed to [`send_text`] as it
            is. Example: {'body': 'Your order has shipped', 'to': '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Sent]
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
    body: SendMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | Sent | None:
    """Send a text.

     `202` when accepted for delivery; `200` with `duplicate: true` and `Idempotent-Replayed: true`
    when the same `Idempotency-Key` and request were seen before (nothing is sent again).

    Args:
        idempotency_key (None | str | Unset):
        body (SendMessage): `POST /messages`: read once at the edge, handed to [`send_text`] as it
            is. Example: {'body': 'Your order has shipped', 'to': '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Sent
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
