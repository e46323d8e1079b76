"""One module per screen (``qt_<screen>.py``) and the small widgets they share."""
