"""The validator: measures kernels on a device, joins measurements with the cost model's
predictions, fits calibration profiles, and reports and plots the error (DESIGN.md, validate/).

Modules: `datasets` (shared public measurements -> the kernel CSV contract; one loader module
per source, `aiconfigurator` and `vidur`, over `measured_files`), `predict`
(vectorised predictions for those tables), `suite` (kernel shapes from the models' operator
tables), `runner` (times them on a GPU or this CPU), `store` (results with provenance),
`compare` (error statistics), `calibrate` (fits `hardware/calibration/*.yaml`), `cpu` (this
machine as a spec), `report` (plotly figures), `golden` (the prediction snapshot CI guards).
Nothing here is imported by `hardware/` or `model/`; torch is imported only where timing needs it.
"""
