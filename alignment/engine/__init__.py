"""Pure statistics of jury-clinician agreement (no Django): see agreement.py for definitions."""
