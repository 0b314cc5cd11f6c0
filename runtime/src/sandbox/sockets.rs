//! TCP sockets and name lookups of one call, each holding a place among the
//! call's descriptors (`limits.open`, and the process-wide budget; see
//! [`super::budget`]).
//!
//! wasmtime-wasi opens the operating system's socket when the guest creates
//! a `tcp-socket`, and closes it when the guest drops it (its streams are
//! its children: the socket cannot be dropped before them). So
//! `create-tcp-socket` takes a place before the socket exists, `accept`
//! before it hands out another one, and dropping the socket gives it back;
//! every other function delegates to wasmtime-wasi unchanged. A name lookup
//! runs `getaddrinfo` on a thread of the shared blocking pool, with a socket
//! of its own for the resolver: `resolve-addresses` takes a place too, given
//! back when the guest drops the lookup's stream — so one call cannot start
//! lookups without bound and fill the pool every call's file I/O runs on. A
//! refusal is `new-socket-limit`, the error the guest would get from the
//! system at `EMFILE`. Which addresses a socket may reach is decided
//! elsewhere ([`super::network::configure_sockets`]).

use std::collections::HashMap;

use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self, IpAddress, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddressFamily, Network};
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket;
use wasmtime_wasi::p2::bindings::sync::sockets::tcp::{
    self, Duration, InputStream, IpSocketAddress, OutputStream, Pollable, ShutdownType, TcpSocket,
};
use wasmtime_wasi::p2::{SocketError, SocketResult};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

use super::budget::{Descriptors, Held, NoDescriptor};

/// The sockets a call holds open, by resource handle.
#[derive(Debug)]
pub struct SocketHolds {
    descriptors: Descriptors,
    held: HashMap<u32, Held>,
}

impl SocketHolds {
    /// Sockets counted in `descriptors` (the call's budget, shared with its
    /// folders and HTTP connections).
    pub fn new(descriptors: Descriptors) -> Self {
        SocketHolds {
            descriptors,
            held: HashMap::new(),
        }
    }

    /// A place for one more socket, or `new-socket-limit`.
    fn take(&self) -> SocketResult<Held> {
        self.descriptors.take().map_err(|why| {
            match why {
                NoDescriptor::Call(_) => tracing::info!("a socket was refused: {why}"),
                NoDescriptor::Process => tracing::warn!("a socket was refused: {why}"),
            }
            ErrorCode::NewSocketLimit.into()
        })
    }
}

/// wasmtime-wasi's sockets view of one call, with the sockets it holds.
pub struct Sockets<'a> {
    pub view: WasiSocketsCtxView<'a>,
    pub holds: &'a mut SocketHolds,
}

struct CountedSockets;

impl HasData for CountedSockets {
    type Data<'a> = Sockets<'a>;
}

/// Links `wasi:sockets/tcp-create-socket`, `wasi:sockets/tcp` and
/// `wasi:sockets/ip-name-lookup` through this layer, replacing what
/// `wasmtime_wasi::p2::add_to_linker_sync` linked. Call after that; `get`
/// gives a store's [`Sockets`] view (`CallState::counted_sockets`).
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> Sockets<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = tcp_create_socket::add_to_linker::<T, CountedSockets>(linker, get)
        .and_then(|()| tcp::add_to_linker::<T, CountedSockets>(linker, get))
        .and_then(|()| ip_name_lookup::add_to_linker::<T, CountedSockets>(linker, get));
    linker.allow_shadowing(false);
    linked
}

impl tcp_create_socket::Host for Sockets<'_> {
    fn create_tcp_socket(
        &mut self,
        address_family: IpAddressFamily,
    ) -> SocketResult<Resource<TcpSocket>> {
        let held = self.holds.take()?;
        let socket = tcp_create_socket::Host::create_tcp_socket(&mut self.view, address_family)?;
        self.holds.held.insert(socket.rep(), held);
        Ok(socket)
    }
}

impl ip_name_lookup::Host for Sockets<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> SocketResult<Resource<ResolveAddressStream>> {
        let held = self.holds.take()?;
        let lookup = ip_name_lookup::Host::resolve_addresses(&mut self.view, network, name)?;
        self.holds.held.insert(lookup.rep(), held);
        Ok(lookup)
    }
}

impl ip_name_lookup::HostResolveAddressStream for Sockets<'_> {
    fn resolve_next_address(
        &mut self,
        lookup: Resource<ResolveAddressStream>,
    ) -> SocketResult<Option<IpAddress>> {
        ip_name_lookup::HostResolveAddressStream::resolve_next_address(&mut self.view, lookup)
    }

    fn subscribe(
        &mut self,
        lookup: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<Pollable>> {
        ip_name_lookup::HostResolveAddressStream::subscribe(&mut self.view, lookup)
    }

    fn drop(&mut self, lookup: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        let rep = lookup.rep();
        ip_name_lookup::HostResolveAddressStream::drop(&mut self.view, lookup)?;
        self.holds.held.remove(&rep);
        Ok(())
    }
}

impl tcp::Host for Sockets<'_> {}

impl network::Host for Sockets<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.view, error)
    }

    fn network_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.view, err)
    }
}

impl network::HostNetwork for Sockets<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.view, network)
    }
}

impl tcp::HostTcpSocket for Sockets<'_> {
    fn accept(
        &mut self,
        this: Resource<TcpSocket>,
    ) -> SocketResult<(
        Resource<TcpSocket>,
        Resource<InputStream>,
        Resource<OutputStream>,
    )> {
        let held = self.holds.take()?;
        let accepted = tcp::HostTcpSocket::accept(&mut self.view, this)?;
        self.holds.held.insert(accepted.0.rep(), held);
        Ok(accepted)
    }

    fn drop(&mut self, this: Resource<TcpSocket>) -> wasmtime::Result<()> {
        let rep = this.rep();
        tcp::HostTcpSocket::drop(&mut self.view, this)?;
        // Only once it is gone: a socket with live streams stays.
        self.holds.held.remove(&rep);
        Ok(())
    }

    fn start_bind(
        &mut self,
        this: Resource<TcpSocket>,
        network: Resource<Network>,
        local_address: IpSocketAddress,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::start_bind(&mut self.view, this, network, local_address)
    }

    fn finish_bind(&mut self, this: Resource<TcpSocket>) -> SocketResult<()> {
        tcp::HostTcpSocket::finish_bind(&mut self.view, this)
    }

    fn start_connect(
        &mut self,
        this: Resource<TcpSocket>,
        network: Resource<Network>,
        remote_address: IpSocketAddress,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::start_connect(&mut self.view, this, network, remote_address)
    }

    fn finish_connect(
        &mut self,
        this: Resource<TcpSocket>,
    ) -> SocketResult<(Resource<InputStream>, Resource<OutputStream>)> {
        tcp::HostTcpSocket::finish_connect(&mut self.view, this)
    }

    fn start_listen(&mut self, this: Resource<TcpSocket>) -> SocketResult<()> {
        tcp::HostTcpSocket::start_listen(&mut self.view, this)
    }

    fn finish_listen(&mut self, this: Resource<TcpSocket>) -> SocketResult<()> {
        tcp::HostTcpSocket::finish_listen(&mut self.view, this)
    }

    fn local_address(&mut self, this: Resource<TcpSocket>) -> SocketResult<IpSocketAddress> {
        tcp::HostTcpSocket::local_address(&mut self.view, this)
    }

    fn remote_address(&mut self, this: Resource<TcpSocket>) -> SocketResult<IpSocketAddress> {
        tcp::HostTcpSocket::remote_address(&mut self.view, this)
    }

    fn is_listening(&mut self, this: Resource<TcpSocket>) -> wasmtime::Result<bool> {
        tcp::HostTcpSocket::is_listening(&mut self.view, this)
    }

    fn address_family(&mut self, this: Resource<TcpSocket>) -> wasmtime::Result<IpAddressFamily> {
        tcp::HostTcpSocket::address_family(&mut self.view, this)
    }

    fn set_listen_backlog_size(
        &mut self,
        this: Resource<TcpSocket>,
        value: u64,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::set_listen_backlog_size(&mut self.view, this, value)
    }

    fn keep_alive_enabled(&mut self, this: Resource<TcpSocket>) -> SocketResult<bool> {
        tcp::HostTcpSocket::keep_alive_enabled(&mut self.view, this)
    }

    fn set_keep_alive_enabled(
        &mut self,
        this: Resource<TcpSocket>,
        value: bool,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::set_keep_alive_enabled(&mut self.view, this, value)
    }

    fn keep_alive_idle_time(&mut self, this: Resource<TcpSocket>) -> SocketResult<Duration> {
        tcp::HostTcpSocket::keep_alive_idle_time(&mut self.view, this)
    }

    fn set_keep_alive_idle_time(
        &mut self,
        this: Resource<TcpSocket>,
        value: Duration,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::set_keep_alive_idle_time(&mut self.view, this, value)
    }

    fn keep_alive_interval(&mut self, this: Resource<TcpSocket>) -> SocketResult<Duration> {
        tcp::HostTcpSocket::keep_alive_interval(&mut self.view, this)
    }

    fn set_keep_alive_interval(
        &mut self,
        this: Resource<TcpSocket>,
        value: Duration,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::set_keep_alive_interval(&mut self.view, this, value)
    }

    fn keep_alive_count(&mut self, this: Resource<TcpSocket>) -> SocketResult<u32> {
        tcp::HostTcpSocket::keep_alive_count(&mut self.view, this)
    }

    fn set_keep_alive_count(&mut self, this: Resource<TcpSocket>, value: u32) -> SocketResult<()> {
        tcp::HostTcpSocket::set_keep_alive_count(&mut self.view, this, value)
    }

    fn hop_limit(&mut self, this: Resource<TcpSocket>) -> SocketResult<u8> {
        tcp::HostTcpSocket::hop_limit(&mut self.view, this)
    }

    fn set_hop_limit(&mut self, this: Resource<TcpSocket>, value: u8) -> SocketResult<()> {
        tcp::HostTcpSocket::set_hop_limit(&mut self.view, this, value)
    }

    fn receive_buffer_size(&mut self, this: Resource<TcpSocket>) -> SocketResult<u64> {
        tcp::HostTcpSocket::receive_buffer_size(&mut self.view, this)
    }

    fn set_receive_buffer_size(
        &mut self,
        this: Resource<TcpSocket>,
        value: u64,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::set_receive_buffer_size(&mut self.view, this, value)
    }

    fn send_buffer_size(&mut self, this: Resource<TcpSocket>) -> SocketResult<u64> {
        tcp::HostTcpSocket::send_buffer_size(&mut self.view, this)
    }

    fn set_send_buffer_size(&mut self, this: Resource<TcpSocket>, value: u64) -> SocketResult<()> {
        tcp::HostTcpSocket::set_send_buffer_size(&mut self.view, this, value)
    }

    fn subscribe(&mut self, this: Resource<TcpSocket>) -> wasmtime::Result<Resource<Pollable>> {
        tcp::HostTcpSocket::subscribe(&mut self.view, this)
    }

    fn shutdown(
        &mut self,
        this: Resource<TcpSocket>,
        shutdown_type: ShutdownType,
    ) -> SocketResult<()> {
        tcp::HostTcpSocket::shutdown(&mut self.view, this, shutdown_type)
    }
}
