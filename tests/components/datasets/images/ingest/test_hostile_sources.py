"""The image ingest given hostile or careless sources: 16-bit pixels, an image far larger decoded than on disk, links
and manifest paths that lead outside the source folder, FIFOs. Each is scaled properly or rejected with its reason,
and nothing outside the source folder is read."""

import os
import time

import numpy as np
from PIL import Image

from kflow.components.datasets.images.ingest import executor
from kflow.components.datasets.images.ingest.source import source_files
from tests.components.datasets.images.ingest.test_executor import ingest, records, save


def reasons(rejects) -> dict[str, str]:
    return {entry["position"]: entry["reason"] for entry in rejects.read()}


def test_16_bit_grey_keeps_its_high_byte_instead_of_clipping(tmp_path):
    root = tmp_path / "src"
    gradient = (np.arange(256, dtype=np.uint16) * 257).reshape(16, 16)  # 0 … 65535
    (root / "ramp").mkdir(parents=True)
    Image.fromarray(gradient).save(root / "ramp" / "g16.png")
    assert Image.open(root / "ramp" / "g16.png").mode == "I;16"
    save(root / "flat" / "f.png", np.full((16, 16), 9), "L")

    summary, examples, _, rejects = ingest(tmp_path / "out", source_path=str(root), image={"size": 16})
    assert summary["rejected"] == 0 and rejects.read() == []
    pixels = records(examples)["ramp/g16.png"][1]
    assert pixels.tolist() == list(range(256))  # value >> 8, not [0, 255, 255, …]


def test_a_32_bit_image_outside_0_255_is_rejected_not_clipped(tmp_path):
    root = tmp_path / "src"
    (root / "a").mkdir(parents=True)
    Image.fromarray(np.full((4, 4), 70000, dtype=np.int32), "I").save(root / "a" / "wide.tif")
    Image.fromarray(np.full((4, 4), 200, dtype=np.int32), "I").save(root / "a" / "narrow.tif")
    save(root / "b" / "x.png", np.full((4, 4), 1), "L")
    summary, examples, _, rejects = ingest(tmp_path / "out", source_path=str(root), image={"size": 4, "channels": 1})
    assert reasons(rejects) == {"a/wide.tif": "unsupported_depth"}
    assert set(records(examples)["a/narrow.tif"][1]) == {200}


def test_an_image_over_the_pixel_limit_is_too_large_before_it_is_decoded(tmp_path):
    root = tmp_path / "src"
    (root / "big").mkdir(parents=True)
    side = int(executor.MAX_IMAGE_PIXELS**0.5) + 100
    Image.new("1", (side, side)).save(root / "big" / "huge.png")  # one colour: a few KB on disk
    assert (root / "big" / "huge.png").stat().st_size < 200_000
    save(root / "big" / "ok.png", np.full((8, 8), 3), "L")
    save(root / "small" / "s.png", np.full((8, 8), 5), "L")
    summary, _, _, rejects = ingest(tmp_path / "out", source_path=str(root), image={"size": 8, "channels": 1})
    (entry,) = rejects.read()
    assert (entry["position"], entry["reason"], entry["size"]) == ("big/huge.png", "too_large", [side, side])
    assert summary["read"] == 3 and summary["rejected"] == 1


def test_links_and_paths_outside_the_source_folder_and_fifos_are_refused(tmp_path):
    outside = save(tmp_path / "elsewhere" / "secret.png", np.full((4, 4), 77), "L")
    root = tmp_path / "src"
    save(root / "a" / "one.png", np.full((4, 4), 1), "L")
    save(root / "b" / "two.png", np.full((4, 4), 2), "L")
    (root / "a" / "stolen.png").symlink_to(outside)
    (root / "b" / "alias.png").symlink_to(root / "a" / "one.png")  # a link that stays inside is fine
    os.mkfifo(root / "b" / "pipe.png")

    started = time.monotonic()
    summary, examples, _, rejects = ingest(tmp_path / "out", source_path=str(root), image={"size": 4})
    assert time.monotonic() - started < 15  # a FIFO is refused at once, not waited on
    assert reasons(rejects) == {"a/stolen.png": "outside_source", "b/pipe.png": "not_a_file"}
    assert sorted(records(examples)) == ["a/one.png", "b/alias.png", "b/two.png"]
    assert summary["read"] == 5 and summary["rejected"] == 2
    assert all(77 not in pixels for _, pixels in records(examples).values())
    # Neither is read for the cache key either.
    assert {path.name for path in source_files(source_path=str(root))} == {"one.png", "two.png", "alias.png"}

    manifest = tmp_path / "data" / "list.csv"
    save(manifest.parent / "img" / "in.png", np.full((4, 4), 4), "L")
    save(manifest.parent / "img" / "in2.png", np.full((4, 4), 6), "L")
    os.mkfifo(manifest.parent / "img" / "fifo.png")
    manifest.write_text(
        f"path,label\nimg/in.png,x\nimg/in2.png,y\n{outside},x\n../elsewhere/secret.png,y\nimg/fifo.png,x\n"
    )
    started = time.monotonic()
    summary, examples, _, rejects = ingest(tmp_path / "out2", source_path=str(manifest), image={"size": 4})
    assert time.monotonic() - started < 15
    assert reasons(rejects) == {
        f"list.csv:4 {outside}": "outside_source",
        "list.csv:5 ../elsewhere/secret.png": "outside_source",
        "list.csv:6 img/fifo.png": "not_a_file",
    }
    assert summary["read"] == 5 and summary["rejected"] == 3
    assert all(77 not in pixels for _, pixels in records(examples).values())
