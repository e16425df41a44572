"""What `rooflens dashboard` hands to Streamlit: page.py (the script it runs) and config.toml (the
server options, also the checkout's .streamlit/config.toml through a link). They sit in a folder of
their own because Streamlit puts the script's folder first on sys.path: dashboard/ itself holds
modules (numbers.py, settings.py, report.py) that would shadow the standard library's."""
