// Anchors the precompiled torch header that every vispec target reuses.
