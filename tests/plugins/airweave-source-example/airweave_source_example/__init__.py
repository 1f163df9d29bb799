"""An example source package: `pip install` it and `example_notes` appears in GET /sources."""
