//! How the storage-side worker writes its answers, shared by the worker
//! (`tessera serve --storage-side`) and by the samples that size them
//! (`SampleSizeExec`), so a sample counts what the worker sends.

use arrow::ipc::CompressionType;
use arrow::ipc::writer::IpcWriteOptions;

/// Arrow IPC compressed with zstd, since the link to the client is what the worker saves
/// and its answers are mostly numbers and short texts (about 2.6 times smaller for
/// TPC-H's lineitem keys and prices, against 1.9 with LZ4); the client's Flight decoder
/// reads either.
pub fn answer_options() -> IpcWriteOptions {
    IpcWriteOptions::default()
        .try_with_compression(Some(CompressionType::ZSTD))
        .expect("this build writes zstd-compressed Arrow IPC")
}
