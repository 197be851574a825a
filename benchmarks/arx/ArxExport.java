// Writes an ARX-anonymized copy of ARX's own Adult, for `privlab assess` (issue 34): the file a
// custodian who used ARX would hold.  Written for privlab against ARX's public API (Apache-2.0).
//   java -cp "$(cat OUT/classpath.txt)" ArxExport <dir with adult.csv and its hierarchies> <k>
//        <suppression limit> <output.csv>
// Quasi-identifiers: every column but occupation (published unchanged: the sensitive value the
// assessment attacks) and salary-class (identifying: ARX replaces it by *).  Metric: ARX's
// precomputed non-uniform entropy (monotonic), as in its test suite.  Prints the chosen node.

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class ArxExport {

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        int k = Integer.parseInt(args[1]);
        double suppression = Double.parseDouble(args[2]);
        String out = args[3];
        Data data = Data.create(new File(dir, "adult.csv"), StandardCharsets.UTF_8, ';');
        String[] qis = {"sex", "age", "race", "marital-status", "education", "native-country",
                        "workclass"};
        for (String a : qis) {
            File f = new File(dir, "adult_hierarchy_" + a + ".csv");
            data.getDefinition().setAttributeType(a, Hierarchy.create(f, StandardCharsets.UTF_8, ';'));
        }
        data.getDefinition().setAttributeType("occupation", AttributeType.INSENSITIVE_ATTRIBUTE);
        data.getDefinition().setAttributeType("salary-class", AttributeType.IDENTIFYING_ATTRIBUTE);
        ARXConfiguration config = ARXConfiguration.create(suppression,
                Metric.createPrecomputedEntropyMetric(0.1d, true));
        config.addPrivacyModel(new KAnonymity(k));
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        result.getOutput(result.getGlobalOptimum()).save(new File(out), ';');
        System.out.println("{\"k\": " + k + ", \"suppression\": " + suppression + ", \"node\": "
                + Arrays.toString(result.getGlobalOptimum().getTransformation()) + "}");
    }
}
