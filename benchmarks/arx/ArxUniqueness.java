// ARX side of benchmarks/arx/arx_uniqueness.py: ARX's population-uniqueness estimates (Zayatz,
// Pitman, SNB and Dankar et al.'s decision rule; RiskModelPopulationUniqueness) for the golden
// file tests/data/arx_population_uniqueness.csv.  Written for privlab against ARX's public API
// (Apache-2.0).  Two kinds of input line on stdin, one case each:
//   data;<case>;<csv file>;<qi,qi,...>;<fraction,fraction,...>
//       the class-size histogram of the csv's records on those quasi-identifiers, as ARX builds
//       it (DataHandle.getRiskEstimator(...).getEquivalenceClassModel()), at each fraction
//   hist;<case>;<size:count size:count ...>;<fraction,fraction,...>
// For each case and fraction prints one line:
//   <case>;<fraction>;<n>;<N>;<histogram>;<zayatz>;<pitman>;<snb>;<dankar>;<dankar model>;<ms>
// where an estimate ARX finds invalid is printed as 0 (ARX's getNumUniqueTuples* convention) and
// ms is the median wall time of 7 fresh RiskModelPopulationUniqueness computations of all four.

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXSolverConfiguration;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.risk.RiskModelHistogram;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness;

import com.carrotsearch.hppc.IntIntOpenHashMap;

public class ArxUniqueness {

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split(";");
            if (f[0].equals("data")) {
                Data data = Data.create(new File(f[2]), StandardCharsets.UTF_8, ';');
                DataHandle handle = data.getHandle();
                Set<String> qis = new HashSet<>(Arrays.asList(f[3].split(",")));
                for (int c = 0; c < handle.getNumColumns(); c++) {
                    String a = handle.getAttributeName(c);
                    data.getDefinition().setAttributeType(a, qis.contains(a)
                            ? AttributeType.QUASI_IDENTIFYING_ATTRIBUTE : AttributeType.INSENSITIVE_ATTRIBUTE);
                }
                for (String fr : f[4].split(",")) {
                    double fraction = Double.parseDouble(fr);
                    ARXPopulationModel model = ARXPopulationModel.create(handle.getNumRows(), fraction);
                    ARXSolverConfiguration config = ARXSolverConfiguration.create();
                    RiskModelHistogram hist = handle.getRiskEstimator(model, qis, config).getEquivalenceClassModel();
                    // the values as ARX's risk estimator reports them
                    RiskModelPopulationUniqueness risk = handle.getRiskEstimator(model, qis, config)
                            .getPopulationBasedUniquenessRisk();
                    report(f[1], fr, model, hist, risk);
                }
            } else if (f[0].equals("hist")) {
                IntIntOpenHashMap map = new IntIntOpenHashMap();
                for (String pair : f[2].trim().split(" ")) {
                    String[] kv = pair.split(":");
                    map.put(Integer.parseInt(kv[0]), Integer.parseInt(kv[1]));
                }
                for (String fr : f[3].split(",")) {
                    double fraction = Double.parseDouble(fr);
                    RiskModelHistogram hist = new RiskModelHistogram(map);
                    ARXPopulationModel model = ARXPopulationModel.create((int) hist.getNumRecords(), fraction);
                    RiskModelPopulationUniqueness risk = new RiskModelPopulationUniqueness(model, hist,
                            ARXSolverConfiguration.create());
                    report(f[1], fr, model, hist, risk);
                }
            } else {
                throw new IllegalArgumentException("unknown input line: " + line);
            }
        }
    }

    private static void report(String name, String fraction, ARXPopulationModel model, RiskModelHistogram hist,
                               RiskModelPopulationUniqueness risk) {
        double zayatz = risk.getNumUniqueTuplesZayatz();
        double pitman = risk.getNumUniqueTuplesPitman();
        double snb = risk.getNumUniqueTuplesSNB();
        double dankar = risk.getNumUniqueTuplesDankar();
        String chosen = String.valueOf(risk.getPopulationUniquenessModel());
        List<Double> times = new ArrayList<>();
        for (int r = 0; r < 7; r++) {
            long t0 = System.nanoTime();
            RiskModelPopulationUniqueness fresh = new RiskModelPopulationUniqueness(model, hist,
                    ARXSolverConfiguration.create());
            fresh.getNumUniqueTuplesZayatz();
            fresh.getNumUniqueTuplesPitman();
            fresh.getNumUniqueTuplesSNB();
            fresh.getNumUniqueTuplesDankar();
            times.add((System.nanoTime() - t0) / 1e6);
        }
        times.sort(null);
        int[] h = hist.getHistogram();
        StringBuilder hs = new StringBuilder();
        for (int i = 0; i < h.length; i += 2) {
            if (i > 0) {
                hs.append(' ');
            }
            hs.append(h[i]).append(':').append(h[i + 1]);
        }
        System.out.println(name + ";" + fraction + ";" + (long) hist.getNumRecords() + ";"
                + model.getPopulationSize() + ";" + hs + ";" + zayatz + ";" + pitman + ";" + snb + ";"
                + dankar + ";" + chosen + ";" + times.get(3));
    }
}
