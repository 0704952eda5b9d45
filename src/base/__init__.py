"""The ground floor: errors, settings from vars, the model catalog, the version and text
helpers; everything else reads it, it imports nothing of src/."""
