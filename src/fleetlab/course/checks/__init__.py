"""One module (or package) per lab: ``labNN`` registers the checks of lab NN, imported on first use."""
