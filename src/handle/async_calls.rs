//! The async twins of the handle's calls, on `redis::aio` connections:
//! the same machines as the blocking calls, run by the async driver. Kept
//! together, and apart, so that the one feature (`async`) that brings them
//! is one `cfg` on this file.

use super::{Filter, FilterKind};
use crate::engine::operation::{self, many};
use crate::error::Result;
use crate::proto::script::DataOp;

impl<K: FilterKind> Filter<K> {
    /// Async [`open`](Self::open).
    pub async fn open_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> Result<Self> {
        let m = crate::engine::load::open(name, K::accept().0)?;
        crate::exec::run_async(conn, m, None)
            .await
            .map(Self::from_core)
    }

    /// Async [`insert`](Self::insert).
    pub async fn insert_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let m = operation::one(&self.core, DataOp::Add, item);
        self.core.run_async(conn, m).await
    }

    /// Async [`contains`](Self::contains).
    pub async fn contains_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let m = operation::one(&self.core, DataOp::Has, item);
        self.core.run_async(conn, m).await
    }

    /// Async [`check_and_insert`](Self::check_and_insert).
    pub async fn check_and_insert_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let m = operation::one(&self.core, DataOp::CheckAdd, item);
        self.core.run_async(conn, m).await
    }

    /// Async [`insert_many`](Self::insert_many).
    pub async fn insert_many_async<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let m = many(&self.core, DataOp::Add, items);
        self.core.run_async(conn, m).await
    }

    /// Async [`contains_many`](Self::contains_many).
    pub async fn contains_many_async<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let m = many(&self.core, DataOp::Has, items);
        self.core.run_async(conn, m).await
    }

    /// Async [`check_and_insert_many`](Self::check_and_insert_many).
    pub async fn check_and_insert_many_async<C, I>(
        &self,
        conn: &mut C,
        items: I,
    ) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let m = many(&self.core, DataOp::CheckAdd, items);
        self.core.run_async(conn, m).await
    }

    /// Async [`count`](Self::count).
    pub async fn count_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<u64> {
        self.core
            .run_async(conn, operation::count(&self.core))
            .await
    }

    /// Async [`info`](Self::info).
    pub async fn info_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<crate::info::Info> {
        self.core.run_async(conn, operation::info(&self.core)).await
    }

    /// Async [`clear`](Self::clear).
    pub async fn clear_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<()> {
        self.core
            .run_async(conn, operation::clear(&self.core))
            .await
    }

    /// Async [`drop`](Self::drop).
    pub async fn drop_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<bool> {
        self.core
            .run_async(conn, operation::drop_filter(&self.core))
            .await
    }
}
