"""The page in headless Chromium against the Worker on workerd."""
