// Writes an ARX-anonymized copy of ARX's own Adult, for `privlab assess` (issue 34): the file a
// custodian who used ARX would hold.  Written for privlab against ARX's public API (Apache-2.0).
//   java -cp "$(cat OUT/classpath.txt)" ArxExport <dir with adult.csv and its hierarchies> <k>
//        <suppression limit> <output.csv>
// Quasi-identifiers: every column but occupation (published unchanged: the sensitive value the
// assessment attacks) and salary-class (identifying: ARX replaces it by *).  Metric: ARX's
// precomputed non-uniform entropy (monotonic), as in its test suite.  Prints the chosen node and
// ARX's own risk analysis of the output (one JSON line), at sampling fractions 0.01 and 0.1.

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.risk.RiskEstimateBuilder;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness;
import org.deidentifier.arx.risk.RiskModelSampleRisks;
import org.deidentifier.arx.risk.RiskModelSampleSummary;

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
        DataHandle output = result.getOutput(result.getGlobalOptimum());
        output.save(new File(out), ';');
        StringBuilder json = new StringBuilder();
        json.append("{\"k\": " + k + ", \"suppression\": " + suppression + ", \"node\": "
                + Arrays.toString(result.getGlobalOptimum().getTransformation()));
        // ARX's own risk analysis of its output, at two sampling fractions of the population
        for (double pi : new double[] {0.01, 0.1}) {
            ARXPopulationModel population = ARXPopulationModel.create(output.getNumRows(), pi);
            RiskEstimateBuilder risk = output.getRiskEstimator(population);
            RiskModelSampleRisks sample = risk.getSampleBasedReidentificationRisk();
            RiskModelSampleSummary summary = risk.getSampleBasedRiskSummary(0.2);
            RiskModelPopulationUniqueness unique = risk.getPopulationBasedUniquenessRisk();
            String at = ", \"pi=" + pi + "\": {";
            json.append(at
                + "\"classes\": " + risk.getEquivalenceClassModel().getNumClasses()
                + ", \"records\": " + risk.getEquivalenceClassModel().getNumRecords()
                + ", \"prosecutor_highest\": " + sample.getHighestRisk()
                + ", \"prosecutor_average\": " + sample.getEstimatedProsecutorRisk()
                + ", \"journalist\": " + sample.getEstimatedJournalistRisk()
                + ", \"marketer\": " + sample.getEstimatedMarketerRisk()
                + ", \"prosecutor_records_at_risk_0.2\": " + summary.getProsecutorRisk().getRecordsAtRisk()
                + ", \"sample_uniques_fraction\": " + risk.getSampleBasedUniquenessRisk().getFractionOfUniqueRecords()
                + ", \"zayatz\": " + unique.getFractionOfUniqueTuplesZayatz()
                + ", \"pitman\": " + unique.getFractionOfUniqueTuplesPitman()
                + ", \"snb\": " + unique.getFractionOfUniqueTuplesSNB()
                + ", \"dankar\": " + unique.getFractionOfUniqueTuplesDankar()
                + ", \"dankar_model\": \"" + unique.getPopulationUniquenessModel() + "\"}");
        }
        System.out.println(json.append("}"));
    }
}
