package org.apache.hadoop.io;
// Compile-time stand-in (hadoop-core jar absent from the snapshot); never loaded by the benchmark.
public interface Writable {
    void write(java.io.DataOutput out) throws java.io.IOException;
    void readFields(java.io.DataInput in) throws java.io.IOException;
}
