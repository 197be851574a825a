// ARX side of benchmarks/bench_arx.py (issue 21): ARX's own golden Adult cases, timed in one JVM.
// Written for privlab against ARX's public API (Apache-2.0); build and run: see bench_arx.py.
// Prints one JSON line per case: node, loss, the first (cold) time and the warm times.

import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class ArxBench {

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        int repeats = Integer.parseInt(args[1]);
        String only = args.length > 2 ? args[2] : "";
        String[] names = {"k5-4%", "k100-4%", "k5-0%", "k100-0%", "l5-4%"};
        int[] ks = {5, 100, 5, 100, 0};
        double[] supp = {0.04, 0.04, 0.0, 0.0, 0.04};
        for (int c = 0; c < names.length; c++) {
            if (!only.isEmpty() && !only.equals(names[c])) {
                continue;
            }
            boolean ldiv = ks[c] == 0;
            Data data = Data.create(new File(dir, "adult.csv"), StandardCharsets.UTF_8, ';');
            String[] header = {"sex", "age", "race", "marital-status", "education", "native-country",
                               "workclass", "occupation", "salary-class"};
            for (String a : header) {
                if (ldiv && a.equals("occupation")) {
                    data.getDefinition().setAttributeType(a, AttributeType.SENSITIVE_ATTRIBUTE);
                } else {
                    File f = new File(dir, "adult_hierarchy_" + a + ".csv");
                    data.getDefinition().setAttributeType(a, Hierarchy.create(f, StandardCharsets.UTF_8, ';'));
                }
            }
            ARXConfiguration config = ARXConfiguration.create(supp[c],
                    Metric.createPrecomputedEntropyMetric(0.1d, !ldiv));
            if (ldiv) {
                config.addPrivacyModel(new EntropyLDiversity("occupation", 5));
            } else {
                config.addPrivacyModel(new KAnonymity(ks[c]));
            }
            ARXAnonymizer anonymizer = new ARXAnonymizer();
            List<Double> times = new ArrayList<>();
            List<Double> cpu = new ArrayList<>();
            ThreadMXBean bean = ManagementFactory.getThreadMXBean();
            ARXResult result = null;
            for (int r = 0; r < repeats; r++) {
                data.getHandle().release();
                long c0 = bean.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                result = anonymizer.anonymize(data, config);
                times.add((System.nanoTime() - t0) / 1e9);
                cpu.add((bean.getCurrentThreadCpuTime() - c0) / 1e9);
            }
            int[] node = result.getGlobalOptimum().getTransformation();
            String loss = result.getGlobalOptimum().getHighestScore().toString();
            System.out.println("{\"case\": \"" + names[c] + "\", \"node\": " + Arrays.toString(node)
                    + ", \"loss\": " + loss + ", \"times\": " + times + ", \"cpu\": " + cpu
                    + ", \"checked\": " + result.getProcessStatistics().getTransformationsChecked() + "}");
        }
    }
}
