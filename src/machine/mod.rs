//! Machine files (`calibration/*.toml`): memory nodes, processing units, links, routes.
