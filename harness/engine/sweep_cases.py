"""The sweep's test file: harness/engine/plugin.py collects it as the sweep's
cases (CaseFile), one test item per case, so this module is never
imported as tests. Run through `scripts/crashcheck run` or `make run`.
Each case runs in the plugin's pool (or in the pytest process, with one
job); its item waits for the result."""
