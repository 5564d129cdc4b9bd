from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.contact import Contact
from ...models.error import Error
from ...models.upsert_contact import UpsertContact
from ...types import Response


def _get_kwargs(
    *,
    body: UpsertContact,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/contacts",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Contact | Error | None:
    if response.status_code == 200:
        response_200 = Contact.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Contact.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Contact | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: UpsertContact,
) -> Response[Contact | Error]:
    """Create or update a contact, by phone number.

    Args:
        body (UpsertContact): `POST /contacts`: a contact's fields; an omitted field is left as it
            is, `""` clears it. Example: {'email': 'ann@example.com', 'name': 'Ann Lee', 'phone':
            '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Contact | Error]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: UpsertContact,
) -> Contact | Error | None:
    """Create or update a contact, by phone number.

    Args:
        body (UpsertContact): `POST /contacts`: a contact's fields; an omitted field is left as it
            is, `""` clears it. Example: {'email': 'ann@example.com', 'name': 'Ann Lee', 'phone':
            '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Contact | Error
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: UpsertContact,
) -> Response[Contact | Error]:
    """Create or update a contact, by phone number.

    Args:
        body (UpsertContact): `POST /contacts`: a contact's fields; an omitted field is left as it
            is, `""` clears it. Example: {'email': 'ann@example.com', 'name': 'Ann Lee', 'phone':
            '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Contact | Error]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: UpsertContact,
) -> Contact | Error | None:
    """Create or update a contact, by phone number.

    Args:
        body (UpsertContact): `POST /contacts`: a contact's fields; an omitted field is left as it
            is, `""` clears it. Example: {'email': 'ann@example.com', 'name': 'Ann Lee', 'phone':
            '+12015550123'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Contact | Error
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
