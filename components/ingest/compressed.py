"""Files that may be compressed, as datasets are downloaded (Kaggle's `train.csv.zip`, `.csv.gz`, `.csv.bz2`,
`.csv.xz`, `.csv.zst` as pandas and DuckDB write it): told by their first bytes, not their names, and read
decompressed. A ZIP archive is read when it holds one file (its folders and macOS' `__MACOSX/` copies aside); an
Office document (an .xlsx workbook is a ZIP: the csv dataset reads one, csv/ingest/workbook.py) or an archive of
several files is refused in one line. Text in UTF-16
(Excel's "Unicode Text", told by its byte-order mark) is read as UTF-8."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import zipfile
from pathlib import PurePosixPath
from typing import BinaryIO

# (magic, compression); zstd is read by `zstandard` (Apache Beam's own dependency: none in the standard library before
# Python 3.14).
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"PK\x03\x04", "zip"), (b"\x28\xb5\x2f\xfd", "zstd"))


# The names a compressed file of another kind takes (`x.csv.bz2`): what a folder's listing matches, as open_source
# reads them all.
SUFFIXES = ("", ".gz", ".bz2", ".xz", ".zip", ".zst")


def compression(path: str) -> str | None:
    """The compression the file's first bytes say: gzip, bzip2, xz, zip or zstd; None when they say none."""
    with _open(path) as file:
        start = file.read(10)
    if start[:3] == b"BZh" and start[4:10] == b"1AY&SY":
        return "bzip2"
    return next((kind for magic, kind in _MAGIC if start.startswith(magic)), None)


def is_gzip(path: str) -> bool:
    return compression(path) == "gzip"


def is_utf16(path: str) -> bool:
    """Whether the (decompressed) file starts with UTF-16's byte-order mark: Excel's "Unicode Text" export."""
    with _decompressed(path) as file:
        return file.read(2) in (b"\xff\xfe", b"\xfe\xff")


def needs_decoding(path: str) -> bool:
    """Whether the file is read through a decoder (`open_source`: decompressed, or UTF-16 text as UTF-8): its
    records cannot be cut by byte offsets."""
    return compression(path) is not None or is_utf16(path)


def open_source(path: str) -> BinaryIO:
    """The file's bytes, decompressed when it is compressed (`compression`), and UTF-16 text (with its byte-order
    mark) as UTF-8, which the readers' byte-wise record cutting needs; a ValueError naming the path for a ZIP
    archive that is not one file."""
    stream = _decompressed(path)
    if is_utf16(path):
        return codecs.EncodedFile(stream, "utf-8", "utf-16")  # type: ignore[return-value]
    return stream


def _decompressed(path: str) -> BinaryIO:
    kind = compression(path)
    if kind == "zip":
        return _ZipMember(path)
    opener = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open, "zstd": _zstd_open}.get(kind)  # type: ignore
    return opener(_open(path), "rb") if opener else _open(path)  # type: ignore[return-value]


def _zstd_open(file: BinaryIO, mode: str) -> BinaryIO:
    """A zstd file's bytes as a buffered stream (its frames one after another, as `zstd` and pandas write them; the
    reader alone is not iterable by lines)."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(file, read_across_frames=True, closefd=True)
    return io.BufferedReader(reader)  # type: ignore[arg-type]


class _ZipMember(io.BufferedIOBase):
    """The one file of a ZIP archive, read as a stream; closing it closes the archive."""

    def __init__(self, path: str):
        super().__init__()
        try:
            self._archive = zipfile.ZipFile(_open(path))
        except zipfile.BadZipFile as error:  # a download cut short: its directory, at the end, is missing
            raise ValueError(
                f"data.source.path: {path} is a ZIP archive that cannot be read (cut short?): {error}"
            ) from None
        try:
            self._member = self._archive.open(_only_member(path, self._archive))
        except BaseException:
            self._archive.close()
            raise

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._member.read(-1 if size is None else size)

    def read1(self, size: int = -1) -> bytes:
        return self._member.read1(size)

    def close(self) -> None:
        if not self.closed:
            self._member.close()
            self._archive.close()
        super().close()


def _only_member(path: str, archive: zipfile.ZipFile) -> zipfile.ZipInfo:
    names = {info.filename for info in archive.infolist()}
    if "[Content_Types].xml" in names:  # the Office Open XML package: .xlsx, .docx, .pptx
        raise ValueError(f"data.source.path: {path} is an Office document (.xlsx, .xlsb, .docx, …), not a table's "
                         "file here: the csv dataset reads an .xlsx workbook; save others as CSV")  # fmt: skip
    files = [
        info
        for info in archive.infolist()
        if not info.is_dir()
        and not info.filename.startswith("__MACOSX/")
        and not PurePosixPath(info.filename).name.startswith(".")
    ]
    if len(files) != 1:
        shown = ", ".join(info.filename for info in files[:3]) + (", …" if len(files) > 3 else "")
        raise ValueError(f"data.source.path: {path} is a ZIP archive of {len(files)} files ({shown}): unzip it "
                         "and set data.source.path to the file or the folder")  # fmt: skip
    return files[0]


def _open(path: str) -> BinaryIO:
    """A local file, or one through Beam's FileSystems (a staged copy under a gs:// or s3:// temp location)."""
    if "://" not in path:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it.
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
