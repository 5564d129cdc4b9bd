from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.availability import Availability
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    to: str | Unset = UNSET,
    line_id: str | Unset = UNSET,
    default_country: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["to"] = to

    params["line_id"] = line_id

    params["default_country"] = default_country

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/messaging/availability",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Availability | Error | None:
    if response.status_code == 200:
        response_200 = Availability.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Availability | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    to: str | Unset = UNSET,
    line_id: str | Unset = UNSET,
    default_country: str | Unset = UNSET,
) -> Response[Availability | Error]:
    """Whether a number can be reached over iMessage and SMS from a line.

    Args:
        to (str | Unset):
        line_id (str | Unset):
        default_country (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Availability | Error]
    """

    kwargs = _get_kwargs(
        to=to,
        line_id=line_id,
        default_country=default_country,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    to: str | Unset = UNSET,
    line_id: str | Unset = UNSET,
    default_country: str | Unset = UNSET,
) -> Availability | Error | None:
    """Whether a number can be reached over iMessage and SMS from a line.

    Args:
        to (str | Unset):
        line_id (str | Unset):
        default_country (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Availability | Error
    """

    return sync_detailed(
        client=client,
        to=to,
        line_id=line_id,
        default_country=default_country,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    to: str | Unset = UNSET,
    line_id: str | Unset = UNSET,
    default_country: str | Unset = UNSET,
) -> Response[Availability | Error]:
    """Whether a number can be reached over iMessage and SMS from a line.

    Args:
        to (str | Unset):
        line_id (str | Unset):
        default_country (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Availability | Error]
    """

    kwargs = _get_kwargs(
        to=to,
        line_id=line_id,
        default_country=default_country,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    to: str | Unset = UNSET,
    line_id: str | Unset = UNSET,
    default_country: str | Unset = UNSET,
) -> Availability | Error | None:
    """Whether a number can be reached over iMessage and SMS from a line.

    Args:
        to (str | Unset):
        line_id (str | Unset):
        default_country (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Availability | Error
    """

    return (
        await asyncio_detailed(
            client=client,
            to=to,
            line_id=line_id,
            default_country=default_country,
        )
    ).parsed
