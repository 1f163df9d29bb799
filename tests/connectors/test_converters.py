"""connectors.converters against real documents (../shared/data) and broken files made here.

No database. The real files come with Docling's ground-truth Markdown, used to check that
the text we extract holds the words a reader sees.
"""
from __future__ import annotations

import codecs
import io
import os
import re
import zipfile
from pathlib import Path

import pytest

import connectors.converters as converters
from connectors.base import SkipEntity
from connectors.converters import SUPPORTED_EXTENSIONS, Document, convert_file, read_front_matter
from connectors.converters._common import MAX_TABLE_ROWS

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
MIXED = DATA / "docs_mixed_formats" / "docling_testdata"
HANDBOOK = DATA / "docs_18f_handbook" / "pages"
LIMIT = 25 * 1024 * 1024


def convert(path: Path, max_bytes: int = LIMIT) -> Document:
    return convert_file(path, max_bytes=max_bytes)


def skip_reason(path: Path, max_bytes: int = LIMIT) -> str:
    with pytest.raises(SkipEntity) as info:
        convert_file(path, max_bytes=max_bytes)
    return info.value.reason


def words(text: str) -> set[str]:
    return set(re.findall(r"\w{3,}", text.lower()))


# --- real documents -------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, name, min_recall", [
    ("docx", "word_sample.docx", 0.98),
    ("docx", "word_tables.docx", 0.98),
    ("docx", "textbox.docx", 0.98),
    ("docx", "docx_comments.docx", 0.98),
    ("docx", "unit_test_headers.docx", 0.98),
    ("pptx", "powerpoint_sample.pptx", 0.98),
    ("xlsx", "xlsx_01.xlsx", 0.7),   # the ground truth also names the charts
    ("csv", "csv-comma.csv", 0.98),
    ("csv", "csv-semicolon.csv", 0.98),
    ("html", "kvp_data_example.html", 0.98),
    ("html", "html_rich_table_cells.html", 0.8),  # the ground truth keeps image URLs
    ("html", "wiki_duck.html", 0.65),  # ... and reference URLs
    ("md", "wiki.md", 0.98),
    ("pdf", "multi_page.pdf", 0.98),
    ("pdf", "2305.03393v1-pg9.pdf", 0.95),
    ("pdf", "normal_4pages.pdf", 0.98),
    ("pdf", "right_to_left_01.pdf", 0.95),
    ("pdf", "amt_handbook_sample.pdf", 0.98),
])
def test_text_recall_against_ground_truth(fmt, name, min_recall):
    source = MIXED / fmt / "sources" / name
    truth_name = f"{Path(name).stem}.md" if fmt == "pdf" else f"{name}.md"
    truth = (MIXED / fmt / "groundtruth_md" / truth_name).read_text(encoding="utf-8")
    truth = re.sub(r"<!--.*?-->", "", truth)
    got = words(convert(source).text)
    expected = words(truth)
    recall = len(expected & got) / len(expected)
    assert recall >= min_recall, sorted(expected - got)[:20]


def test_docx_headings_lists_tables():
    doc = convert(MIXED / "docx" / "sources" / "word_sample.docx")
    assert "# Swimming in the lake" in doc.text
    assert "# Let’s swim!" in doc.text and "## Let’s eat" in doc.text
    assert "- Paddle about" in doc.text
    assert "Berries | Blueberry, Strawberry, Cranberry | 150" in doc.text
    assert "After we had a good day of swimming in the lake, it’s important to eat something nice" in doc.text


def test_docx_text_boxes_and_equations():
    textbox = convert(MIXED / "docx" / "sources" / "textbox.docx")
    assert "Infectious Disease Reporting Procedure for the 113th Academic Year Kindergarten" in textbox.text
    assert textbox.text.count("A report must be submitted within 24 hours") == 1  # no VML duplicate
    assert textbox.title == "傳染病通報作業流程"  # the core-properties title
    equations = convert(MIXED / "docx" / "sources" / "equations.docx")
    assert "E=mc2" in equations.text


def test_docx_merged_cells_written_once():
    doc = convert(MIXED / "docx" / "sources" / "word_tables.docx")
    assert "Cell 1.0 | Merged Cell 1.1 1.2\n" in doc.text


def test_pptx_slides_tables_and_notes():
    doc = convert(MIXED / "pptx" / "sources" / "powerpoint_sample.pptx")
    assert doc.text.startswith("## Slide 1: Test Table Slide")
    assert "## Slide 2: Second slide title" in doc.text
    assert "## Slide 3" in doc.text
    assert "R1 | True | False |  | False | True | True" in doc.text
    assert "Notes: Some notes on the second slide." in doc.text
    assert "A rectangle shape with this text inside." in doc.text


def test_xlsx_sheets_rows_name_their_columns():
    doc = convert(MIXED / "xlsx" / "sources" / "xlsx_01.xlsx")
    for sheet in ("Sheet1", "Sheet2", "Sheet3"):
        assert f"## Sheet: {sheet}" in doc.text
    assert "first\tsecond\tthird\nfirst: 1 | second: 5 | third: 9" in doc.text
    assert "first: 6 | second: 0 | third: -6" in doc.text  # integers, not "6.0"
    # the second table of Sheet2, below a blank row, gets its own header
    assert "\n\ncol-1\tcol-2\tcol-3\ncol-1: 1 | col-2: 2 | col-3: 3" in doc.text


@pytest.mark.parametrize("name", ["csv-comma.csv", "csv-semicolon.csv"])
def test_csv_delimiter_is_detected(name):
    doc = convert(MIXED / "csv" / "sources" / name)
    lines = doc.text.splitlines()
    assert lines[0].startswith("Index\tCustomer Id\tFirst Name")
    assert lines[1].startswith("Index: 1 | Customer Id: DD37Cf93aecA6Dc | First Name: Sheryl")
    assert "Company: Dominguez" in doc.text and "Website: https://goodwin-ingram.com/" in doc.text


def test_csv_rows_are_capped(tmp_path):
    path = tmp_path / "big.csv"
    rows = ["id,name"] + [f"{i},name {i}" for i in range(MAX_TABLE_ROWS + 7)]
    path.write_text("\n".join(rows), encoding="utf-8")
    text = convert(path).text
    assert f"id: {MAX_TABLE_ROWS - 1} | name: name {MAX_TABLE_ROWS - 1}" in text
    assert f"id: {MAX_TABLE_ROWS} |" not in text
    assert text.endswith("[7 more rows not indexed]")


def test_html_keeps_content_drops_boilerplate():
    doc = convert(MIXED / "html" / "sources" / "wiki_duck.html")
    assert doc.title == "Duck - Wikipedia"
    assert "\n# Duck\n" in doc.text and "\n## Etymology\n" in doc.text
    assert "Duck is the common name for numerous species of waterfowl in the family Anatidae." in doc.text
    assert "Kingdom: | Animalia" in doc.text  # the infobox table
    assert "Cookie statement" not in doc.text  # <footer>
    assert "RLQ" not in doc.text and "function(" not in doc.text  # <script>
    assert "Main page" not in doc.text  # <nav>


def test_html_rich_table_cells():
    doc = convert(MIXED / "html" / "sources" / "html_rich_table_cells.html")
    assert "Mallard | Ponds, lakes, rivers | Quack" in doc.text
    assert "Gracefully glide on H2O surfaces." in doc.text


def test_pdf_pages_and_metadata_title():
    doc = convert(MIXED / "pdf" / "sources" / "multi_page.pdf")
    assert doc.text.startswith("The Evolution of the Word Processor")
    assert "Patented in 1868 by Christopher Latham Sholes" in doc.text
    handbook = convert(MIXED / "pdf" / "sources" / "amt_handbook_sample.pdf")
    assert handbook.title == "AMT General Handbook"
    paper = convert(MIXED / "pdf" / "sources" / "2305.03393v1-pg9.pdf")
    assert "financial tables" in paper.text  # the "ﬁ" ligature spelled out
    korean = convert(MIXED / "pdf" / "sources" / "normal_4pages.pdf")
    assert "코로나" in korean.text


def test_pdf_encrypted_and_scanned():
    assert skip_reason(MIXED / "pdf_password" / "sources" / "2206.01062_pg3.pdf") == "encrypted PDF"
    assert skip_reason(MIXED / "ocr" / "sources" / "ocr_test.pdf") == "empty: no text extracted"


def test_markdown_front_matter_becomes_fields():
    path = HANDBOOK / "travel-and-leave" / "fmla.md"
    doc = convert(path)
    assert doc.title == "Family Medical Leave Act (FMLA)"
    assert doc.fields["keywords"].startswith("leave, request, parental")
    assert not doc.text.startswith("---") and "title:" not in doc.text.split("\n", 1)[0]
    assert "FMLA entitles you to take up to 12 weeks of *unpaid* leave" in doc.text
    assert read_front_matter(path) == (doc.fields, "Family Medical Leave Act (FMLA)")


def test_markdown_title_falls_back_to_first_h1():
    assert convert(MIXED / "md" / "sources" / "mixed.md").title == "Title"
    assert read_front_matter(MIXED / "md" / "sources" / "mixed.md") == ({}, None)


def test_markdown_front_matter_only_is_indexed_by_its_title(tmp_path):
    document = convert_file(HANDBOOK / "tools" / "vmware-fusion.md", max_bytes=LIMIT)
    assert document.text == document.title
    stub = tmp_path / "stub.md"
    stub.write_text("---\nredirect_to: https://example.org\n---\n", encoding="utf-8")
    assert skip_reason(stub) == "empty: no text extracted"


def test_front_matter_is_json_safe(tmp_path):
    path = tmp_path / "note.md"
    path.write_text("---\ntitle: Dated\ndate: 2024-05-01\nwhen: 2024-05-01 10:30:00\n"
                    "tags: [a, b]\nodd: \"x\\0y\"\n---\n\n# Heading\n\nBody text.\n", encoding="utf-8")
    fields, title = read_front_matter(path)
    assert title == "Dated"
    assert fields == {"title": "Dated", "date": "2024-05-01", "when": "2024-05-01T10:30:00",
                      "tags": ["a", "b"], "odd": "xy"}
    doc = convert(path)
    assert doc.fields == fields and doc.text == "# Heading\n\nBody text."


def test_broken_front_matter_keeps_the_file(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("---\ntitle: [unclosed\n---\n\nStill indexed.\n", encoding="utf-8")
    doc = convert(path)
    assert "Still indexed." in doc.text and doc.fields == {}
    assert read_front_matter(path) == ({}, None)


def test_read_front_matter_never_fails(tmp_path):
    assert read_front_matter(tmp_path / "missing.md") == ({}, None)
    assert read_front_matter(MIXED / "pdf" / "sources" / "multi_page.pdf") == ({}, None)
    (tmp_path / "bin.md").write_bytes(b"\x00\x01\x02\x03" * 1000)
    assert read_front_matter(tmp_path / "bin.md") == ({}, None)


def test_supported_extensions():
    for ext in (".md", ".mdx", ".txt", ".json", ".yaml", ".xml", ".html", ".htm", ".pdf", ".docx",
                ".pptx", ".xlsx", ".csv", ".py", ".ts", ".tsx", ".go", ".rs", ".sql", ".vue", ".svelte"):
        assert ext in SUPPORTED_EXTENSIONS
    assert ".png" not in SUPPORTED_EXTENSIONS and ".env" not in SUPPORTED_EXTENSIONS


def test_source_code_is_read_as_text():
    path = Path(converters.__file__)
    doc = convert(path)
    assert "def convert_file(" in doc.text and doc.title is None


# --- broken and hostile files ---------------------------------------------------------------

def test_too_large_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "huge.txt"
    with open(path, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: instant, no disk used

    def no_read(*args, **kwargs):
        raise AssertionError("the file must not be opened")

    monkeypatch.setattr(converters, "open", no_read, raising=False)
    assert skip_reason(path) == f"file too large: {50 * 1024 * 1024} bytes > limit {LIMIT} bytes"


def test_empty_file(tmp_path):
    for name in ("empty.txt", "empty.pdf", "empty.docx", "blank.md"):
        (tmp_path / name).write_bytes(b"" if name != "blank.md" else b"  \n\n\t\n")
        assert skip_reason(tmp_path / name) == "empty: no text extracted"


def test_corrupt_pdf(tmp_path):
    path = tmp_path / "corrupt.pdf"
    path.write_bytes(os.urandom(4096))
    assert skip_reason(path).startswith("unreadable PDF: ")
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes((MIXED / "pdf" / "sources" / "multi_page.pdf").read_bytes()[:3000])
    reason = skip_reason(truncated)
    assert reason.startswith("unreadable PDF: ") or reason == "empty: no text extracted"


@pytest.mark.parametrize("ext, kind", [(".docx", "DOCX"), (".pptx", "PPTX"), (".xlsx", "XLSX")])
def test_corrupt_office_files(tmp_path, ext, kind):
    random_bytes = tmp_path / f"random{ext}"
    random_bytes.write_bytes(os.urandom(2048))
    assert skip_reason(random_bytes).startswith(f"unreadable {kind}: ")
    wrong_zip = tmp_path / f"wrong{ext}"
    with zipfile.ZipFile(wrong_zip, "w") as zf:
        zf.writestr("hello.txt", "not an office document")
    assert skip_reason(wrong_zip).startswith(f"unreadable {kind}: ")


def test_zip_bomb_is_refused(tmp_path):
    path = tmp_path / "bomb.docx"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/document.xml", b"\0" * (50 * 1024 * 1024))
    path.write_bytes(buffer.getvalue())
    reason = skip_reason(path, max_bytes=1024 * 1024)
    assert reason.startswith("file too large: 52428800 bytes uncompressed")


def test_invalid_utf8_never_crashes(tmp_path, monkeypatch):
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("Café crème, déjà vu — naïve.\n".encode("cp1252"))
    assert convert(latin).text == "Café crème, déjà vu — naïve."
    mostly_utf8 = tmp_path / "mostly.txt"
    mostly_utf8.write_bytes(("Grüße aus Köln. " * 50).encode() + b"\xff\xfe broken byte\n")
    text = convert(mostly_utf8).text
    assert text.startswith("Grüße aus Köln.") and "\ufffd" in text
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("Ünïcode in UTF-16".encode("utf-16"))
    assert convert(utf16).text == "Ünïcode in UTF-16"
    bom_by_chance = tmp_path / "bom.txt"
    bom_by_chance.write_bytes(codecs.BOM_UTF16_LE + os.urandom(3000))
    assert skip_reason(bom_by_chance).startswith("unreadable: ")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(bytes(range(256)) * 64)
    assert skip_reason(binary).startswith("unreadable: ")


def test_nul_characters_are_stripped(tmp_path):
    path = tmp_path / "nul.txt"
    path.write_bytes(b"hello\x00 world\x00\n")
    assert convert(path).text == "hello world"


def test_special_tokens_pass_through(tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_text("before <|endoftext|> after [SEP] [CLS] <s></s>\n", encoding="utf-8")
    assert convert(path).text == "before <|endoftext|> after [SEP] [CLS] <s></s>"


def test_unsupported_and_unreadable(tmp_path, monkeypatch):
    (tmp_path / "image.xyz").write_bytes(b"data")
    assert skip_reason(tmp_path / "image.xyz") == "unsupported file type: .xyz"
    (tmp_path / "Makefile").write_bytes(b"all:\n")
    assert skip_reason(tmp_path / "Makefile") == "unsupported file type: Makefile"
    assert skip_reason(tmp_path / "missing.txt").startswith("unreadable: ")
    (tmp_path / "folder.txt").mkdir()
    assert skip_reason(tmp_path / "folder.txt") == "unreadable: not a regular file"

    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(converters, "open", denied, raising=False)
    assert skip_reason(tmp_path / "secret.txt") == "unreadable: Permission denied"


@pytest.mark.parametrize("ext", sorted(SUPPORTED_EXTENSIONS))
def test_random_bytes_are_skipped_with_a_reason(tmp_path, ext):
    path = tmp_path / f"garbage{ext}"
    path.write_bytes(os.urandom(3000))
    assert skip_reason(path).startswith("unreadable")
