"""One module per lab: ``labNN.py`` registers the checks of lab NN, imported on first use."""
