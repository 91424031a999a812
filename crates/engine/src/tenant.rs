//! Tenants as the engine sees them: a small integer on every keyed operation.
//!
//! A tenant is a namespace. The same key bytes under two tenants are two items: the tenant seeds the key
//! hash and is compared with the key on lookup, and each item records its tenant in its header
//! (`item`). The engine knows nothing of names, passwords, prefixes or ports; the server maps those to
//! ids, and the simulator maps its workload's tenant numbers straight through.
//!
//! Invariants:
//! - `TenantId::DEFAULT` (0) hashes exactly as the engine hashed before tenants existed
//!   (`xxh3_64(key)`, which is `xxh3_64_with_seed(key, 0)`), so a single-tenant engine places, samples
//!   and orders items as it always did.
//! - A key's identity is `(tenant, bytes)`; no operation on one tenant can reach another's items.

/// A tenant's id. 0 is the default tenant: every client that is not authenticated, not on a tenant's
/// listener and not routed by a key prefix. Ids are dense and small (the server numbers tenants by name
/// in the order it first sees them), so per-tenant arrays index by them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TenantId(pub u16);

impl TenantId {
    /// The tenant of clients that name none: memcached's single namespace.
    pub const DEFAULT: TenantId = TenantId(0);

    /// Zero-based index into per-tenant arrays.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A key as the engine sees it: the client's bytes within a tenant's namespace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Key<'a> {
    /// The namespace the key lives in.
    pub tenant: TenantId,
    /// The key exactly as the client sent it (at most 250 bytes); never rewritten by the engine.
    pub bytes: &'a [u8],
}

impl<'a> Key<'a> {
    /// A key of `tenant`.
    pub fn new(tenant: TenantId, bytes: &'a [u8]) -> Key<'a> {
        Key { tenant, bytes }
    }

    /// A key of the default tenant.
    pub fn default_tenant(bytes: &'a [u8]) -> Key<'a> {
        Key::new(TenantId::DEFAULT, bytes)
    }

    /// The 64-bit hash every component uses (shard choice, index, profiler sampling): the key bytes
    /// hashed with the tenant as seed.
    #[inline]
    pub fn hash(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(self.bytes, self.tenant.0 as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tenant_hashes_like_the_plain_key() {
        for key in [
            &b""[..],
            b"k",
            b"some longer key that spans more than one stripe of input",
        ] {
            assert_eq!(
                Key::default_tenant(key).hash(),
                xxhash_rust::xxh3::xxh3_64(key)
            );
        }
    }

    #[test]
    fn tenants_hash_apart() {
        let a = Key::new(TenantId(1), b"k").hash();
        let b = Key::new(TenantId(2), b"k").hash();
        assert_ne!(a, b);
        assert_ne!(a, Key::default_tenant(b"k").hash());
    }
}
