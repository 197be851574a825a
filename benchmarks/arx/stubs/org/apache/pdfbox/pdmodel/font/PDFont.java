package org.apache.pdfbox.pdmodel.font;
// Compile-time stand-in (pdfbox-app jar absent from the snapshot); never loaded by the benchmark.
public abstract class PDFont {}
