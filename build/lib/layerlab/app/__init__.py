"""Layer Lab's Streamlit front end: entry point, shared widgets, job runner, figures, page text."""
